"""The ``dpkit`` command line: a thin layer over the library."""
