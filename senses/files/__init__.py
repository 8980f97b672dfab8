"""The built-in ``files`` sense; nerve loads ``sense.py`` by path."""
