"""The built-in ``disk`` sense; nerve loads ``sense.py`` by path."""
