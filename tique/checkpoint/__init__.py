"""The checkpointer (section 2.4.1 of the paper): stable versions move to Storage, Cache and metadata shrink.

algorithm.py is what one run moves and cleans (and why that is safe); values.py copies a value through the
engine's own text; scheduler.py decides when runs happen; opening.py opens and checks a database to checkpoint;
stats.py is what an operator watches; cli.py is ``tique checkpoint``.
"""

from tique.checkpoint.algorithm import STEPS, Checkpointer, CheckpointerBusy, CheckpointReport, TableReport
from tique.checkpoint.cli import main
from tique.checkpoint.opening import NotATiqueDatabase, check_database, check_tables, open_for_checkpoint
from tique.checkpoint.scheduler import BackgroundCheckpointer, run_loop, start_background
from tique.checkpoint.stats import stats
from tique.checkpoint.values import column_types, from_text

__all__ = [
    "STEPS",
    "BackgroundCheckpointer",
    "CheckpointReport",
    "Checkpointer",
    "CheckpointerBusy",
    "NotATiqueDatabase",
    "TableReport",
    "check_database",
    "check_tables",
    "column_types",
    "from_text",
    "main",
    "open_for_checkpoint",
    "run_loop",
    "start_background",
    "stats",
]
