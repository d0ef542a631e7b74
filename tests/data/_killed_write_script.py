"""Writes rows [START, START+COUNT) of a slow pipeline into OUT with write_parquet (default mode: append).

    python _killed_write_script.py OUT START COUNT SLEEP_PER_BATCH [HANG_FROM]

One file per 10 rows; each batch sleeps, so a test can SIGKILL the process mid-write. Batches holding a row
at or past HANG_FROM (an offset from START) never finish, so the write cannot commit before the kill
however slowly the machine runs.
"""

import sys
import time

import ember

out, start, count, pause = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
hang_from = start + int(sys.argv[5]) if len(sys.argv) > 5 else None


def slowly(batch):
    time.sleep(pause)
    if hang_from is not None and max(batch["id"]) >= hang_from:
        time.sleep(3600)  # the test SIGKILLs the process long before
    return batch


# One block per file: a block's batches leave its task together, so one big block would write every file
# in a burst just before the commit, and the kill could come too late.
ds = ember.data.range(count, override_num_blocks=count // 10).map(lambda row: {"id": row["id"] + start})
ds = ds.map_batches(slowly, batch_size=10)
ds.write_parquet(out, max_rows_per_file=10)
print("committed", flush=True)
