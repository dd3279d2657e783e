"""The words every room shares: vocabulary, errors, problems and advice, the neutral graph, cancel."""
