"""The built-in ``network`` sense; nerve loads ``sense.py`` by path."""
