"""The built-in ``cpu`` sense; nerve loads ``sense.py`` by path."""
