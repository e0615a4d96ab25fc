"""A board in a LAVA lab: its REST client, the image store, the driver."""
