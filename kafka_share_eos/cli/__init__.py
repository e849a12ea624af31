"""The ``kafka-share-eos`` command line."""
