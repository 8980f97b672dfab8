"""The built-in ``power`` sense; nerve loads ``sense.py`` by path."""
