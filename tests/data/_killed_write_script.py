"""Writes rows [START, START+COUNT) of a slow pipeline into OUT with write_parquet (default mode: append).

    python _killed_write_script.py OUT START COUNT SLEEP_PER_BATCH

One file per 10 rows; each batch sleeps, so a test can SIGKILL the process mid-write.
"""

import sys
import time

import ember

out, start, count, pause = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])


def slowly(batch):
    time.sleep(pause)
    return batch


ds = ember.data.range(count).map(lambda row: {"id": row["id"] + start}).map_batches(slowly, batch_size=10)
ds.write_parquet(out, max_rows_per_file=10)
print("committed", flush=True)
