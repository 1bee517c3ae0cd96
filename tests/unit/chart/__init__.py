"""The Helm chart charts/tfjob-extender and manifests/, its rendered defaults."""
