from core.schema import main

main()
