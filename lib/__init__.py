"""Generic fast paths with no knowledge of the domain: binary COPY, Arrow streaming, XLSX sheets.

Like healthchecks' `hc/lib/`: plain modules, no models, each with its own tests in tests/lib/.
Domain modules call them; nothing here imports a project app.
"""
