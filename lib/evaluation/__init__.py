"""From saved runs to numbers: per-question metrics, paired bootstrap ranges, per-design scores,
headroom, the drift check, and the failure cases."""
