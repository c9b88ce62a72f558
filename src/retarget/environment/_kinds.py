"""The codes of the shapes the compiled kernels know (``ShapeArrays.kind``): shared by
:mod:`.shapes`, which turns shapes into arrays, and :mod:`.compiled`, which reads them."""

#: :class:`~retarget.environment.Floor`, :class:`~retarget.environment.Box`,
#: :class:`~retarget.environment.Sphere`.
FLOOR, BOX, SPHERE = 0, 1, 2
