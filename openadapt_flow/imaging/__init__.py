"""Image arithmetic on numpy arrays, knowing nothing of the product: luminance, resizing, morphology, gradients
(`pixels`), normalised cross-correlation (`ncc`), connected components, flood boxes and edges (`components`), PNG
(`png`). The core install carries no OpenCV (180 MB of its 400): these stand for the calls the package made of it.
The lowest layer: every other package may import it, it imports none of them."""
