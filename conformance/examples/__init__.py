"""Examples for implementers (see PROTOCOL.md): a JSON-lines wrapper of the fast reference."""
