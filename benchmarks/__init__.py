"""tique's benchmarks: ``python -m benchmarks COMMAND ...`` from the project's venv."""
