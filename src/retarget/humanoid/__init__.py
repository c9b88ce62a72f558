"""What makes a skeleton a humanoid body: its roles (pelvis, hips, knees, ankles, trunk,
shoulders, elbows, wrists, head) found from its shape, its world (unit and up axis), its
footplants and cuts, the mapping between two humanoids of other hierarchies, the
measures of a retargeted motion, and characters made from one by scaling its segments.
"""
