"""Built-in senses, one folder each (``senses/<name>/sense.py``).

nerve loads a sense by its file path, exactly as it loads a user's; nothing imports this
package. The ``__init__.py`` files exist only so type checkers see each ``sense.py`` as a
distinct module (``senses.cpu.sense``, ``senses.disk.sense``, ...).
"""
