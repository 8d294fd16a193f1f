from repscope.cli import main

main()
