"""The one place the package calls OpenCV (and Pillow for PNG): luminance, resizing, gradients, morphology, medians,
differences and inpainting (`pixels`), normalised cross-correlation (`ncc`), connected components, flood boxes and
edges (`components`), PNG bytes (`png`). Each function is an OpenCV call or a few lines around one, on numpy arrays.
The lowest layer: every other package may import it, it imports none of them. Importing this package itself loads
no OpenCV (`png` needs only Pillow: the run store writes frames without it)."""
