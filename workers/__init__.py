"""lorelab's data plane: Celery tasks that apply, build and benchmark kernels."""
