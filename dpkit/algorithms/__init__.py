"""Private distributed learning algorithms of the seed papers, on a shared ADMM substrate."""
