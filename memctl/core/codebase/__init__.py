"""What in the code a memory is about: anchors, proposals and the project's identity."""
