# The guest: its kernel and sound cards.
uname -rv
cat /proc/asound/cards
