"""The Raspberry Pi 5 over SSH: the session (``session``, ``ssh``), the side slot and its
one-shot tryboot (``slot``, ``boot``), the board's tools and their pinned digests (``digests``,
``tooldigest.sh``), a tuning profile's run-time writes (``tuning``), the board's ``rtgate
bench`` with the peer's loads (``remote``), the controller's reading of what the board left
(``collect``, ``throttle``), and the driver that strings them together (``driver``)."""
