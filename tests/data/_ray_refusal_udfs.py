"""Functions that refuse their input the way ember does, importable by Ray workers (tests.data...)."""

from ember.errors import ConfigError, DataError


def refuse_with_data_error(row):
    raise DataError("column 'x' is a string; cast it first")


def refuse_with_config_error(batch):
    raise ConfigError("batch_size=0 must be positive")
