from services.kzg.server import main

main()
