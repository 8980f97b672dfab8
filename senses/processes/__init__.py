"""The built-in ``processes`` sense; nerve loads ``sense.py`` by path."""
