from core.record.schema import main

main()
