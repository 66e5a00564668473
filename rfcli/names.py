"""The names of rfcli's components, for the command line's choices and help: importing
them loads no numeric library (the packages that implement the components import NumPy,
and a package's modules run its ``__init__`` first).  The components take their lists from
here; tests/cli/test_startup.py checks them against the registries."""

#: kernels of the Fourier map (rfcli.maps.fourier)
FOURIER_KERNELS = ("gaussian", "laplacian", "matern12", "matern32", "matern52")
#: every map kernel (rfcli.maps.make_map)
KERNELS = (*FOURIER_KERNELS, "arccos0", "arccos1", "positive", "ternary", "activation", "ntk",
           "glf")  # fmt: skip
#: maps a model makes from its training rows (the exact GP: rfcli.maps.exact), not encode kernels
MODEL_MAPS = ("exact",)
#: kernels with a bandwidth (--gamma)
BANDWIDTH_KERNELS = ("gaussian", "laplacian", "matern12", "matern32", "matern52", "positive")
#: the GP kernels (encode --gp-kernel with --kernel glf, train --model gpr --gp-kernel)
GP_KERNELS = ("gaussian", "matern12", "matern32", "matern52")
#: the activations of the ternary/activation maps (the keys of rfcli.maps.activation.TARGETS)
TARGET_NAMES = ("relu", "abs", "cos", "sin", "erf", "tanh")
#: quantizer kinds a user can ask for by name with a bit count
DESIGNABLE = ("lm", "lm2", "stoc", "uniform", "sign")
#: every quantizer kind encode takes
QUANTIZER_KINDS = (*DESIGNABLE, "binary", "ternary", "trits", "empirical", "none")
#: the bit widths ``-b auto`` compares, those the quantizer takes (rfcli.learn.bits_choice)
BIT_CANDIDATES = (1, 2, 3, 4, 8)
