"""The package's version, in a module of its own: code inside openadapt_flow reads it from here, never from the
package's face (`openadapt_flow/__init__.py`, which names the Python API for type checkers and would tie every module
that read the version to the runtime)."""

__version__ = "0.1.0"
