from nerve.cli.main import run

run()
