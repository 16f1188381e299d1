// Package python runs Triton Python backend models (model.py).
package python
