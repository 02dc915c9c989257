"""Library code for the Nemotron 3.5 Lightning stack: config, catalog, manifests, render."""
