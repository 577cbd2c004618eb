"""The `#lorelab` email commands: the language, who may ask and how often, MAINTAINERS, and
the handler that acts on commands found in stored mail."""
