"""The built-in ``memory`` sense; nerve loads ``sense.py`` by path."""
