"""CoQ across its trained parts: decomposition, pattern selection and writing."""
