"""Shrunk corrections of the emulator on measured step times (Gavel, a real H100): the
residual transfer-learning study, its correctors and the per-breakdown variant."""
