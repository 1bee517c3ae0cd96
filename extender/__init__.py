"""tfjob-extender: a kube-scheduler HTTP extender for distributed TensorFlow training."""

__version__ = "0.2.0"
