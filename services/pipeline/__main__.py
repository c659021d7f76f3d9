from services.pipeline.server import main

main()
