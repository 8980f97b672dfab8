"""The built-in ``shell`` sense; nerve loads ``sense.py`` by path."""
