"""The file formats the runtime translates: one module per format, each the one owner of its format."""
