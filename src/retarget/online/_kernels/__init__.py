"""The online methods' compiled frames (numba): Choi & Ko's update, Shin et al.'s puppetry
frame."""
