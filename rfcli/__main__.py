from rfcli.cli import main

main()
