"""A Lightning callback that reports a ``Trainer.fit`` through repscope's progress bars and lines.

:class:`TrainingProgress` draws one :func:`repscope.progress.progress_bar` per fit (create the ``Trainer``
with ``enable_progress_bar=False``), and turns Lightning's own handling of Ctrl-C (a message and
``sys.exit(1)``) back into a ``KeyboardInterrupt``, so the command ends with ``repscope: interrupted``
and exit status 130.
"""

from __future__ import annotations

import contextlib
import math
import signal
from typing import Any

from lightning.pytorch.callbacks import Callback

from repscope.progress import Update, progress_bar


class TrainingProgress(Callback):
    """Report a ``Trainer.fit`` as one bar (terminal) or progress lines (elsewhere).

    The bar reads ``{description}: epoch e of E``, counting batches over all epochs; lines
    add the elapsed and remaining time. Pass it to a ``Trainer`` created with
    ``enable_progress_bar=False``. A resumed fit starts the count at the batches done before
    (``initial`` of :func:`repscope.progress.progress_bar`), so its time left follows this process's rate only.

    Ctrl-C: Lightning catches ``KeyboardInterrupt`` during ``fit``, logs a message, sets SIGINT
    to be ignored and calls ``sys.exit(1)``. This callback's ``on_exception`` restores the
    default SIGINT handler and raises ``KeyboardInterrupt`` again, so that the caller (the CLI)
    sees an interrupt and exits with status 130.
    """

    def __init__(self, description: str, every_seconds: float | None = None, enabled: bool | None = None) -> None:
        super().__init__()
        self.description = str(description)
        self.every_seconds = every_seconds
        self.enabled = enabled
        self._stack: contextlib.ExitStack | None = None
        self._update: Update | None = None
        self._per_epoch: int | None = None
        self._epochs: int | None = None

    # -- helpers ------------------------------------------------------------------------

    def _label(self, epoch: int) -> str:
        if self._epochs:
            return f"{self.description}: epoch {epoch + 1} of {self._epochs}"
        return f"{self.description}: epoch {epoch + 1}"

    def _close(self, error: BaseException | None = None) -> None:
        stack, self._stack, self._update = self._stack, None, None
        if stack is not None:
            if error is None:
                stack.close()
            else:  # the bar ends as stopped (no "done" line), and knows a Ctrl-C came out
                stack.__exit__(type(error), error, error.__traceback__)

    # -- hooks --------------------------------------------------------------------------

    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        """Open the bar of the fit: batches over all epochs, started at those a resumed fit did before.

        Parameters
        ----------
        trainer : lightning.pytorch.Trainer
            The trainer that fits.
        pl_module : lightning.pytorch.LightningModule
            The task it fits (not read).
        """
        self._close()
        batches = trainer.num_training_batches
        self._per_epoch = (
            int(batches)
            if isinstance(batches, int) or (isinstance(batches, float) and math.isfinite(batches))
            else None
        )
        epochs = trainer.max_epochs
        self._epochs = int(epochs) if epochs is not None and epochs > 0 else None
        total = self._per_epoch * self._epochs if self._per_epoch and self._epochs else None
        max_steps = getattr(trainer, "max_steps", -1)
        if max_steps is not None and max_steps > 0:
            total = min(total, max_steps) if total else max_steps
        # a resumed fit starts with the epochs (batches) of the checkpoint done: not this process's work
        initial = self._done(trainer, trainer.current_epoch, -1)
        self._stack = contextlib.ExitStack()
        self._update = self._stack.enter_context(
            progress_bar(
                self._label(trainer.current_epoch),
                total=total,
                enabled=self.enabled,
                every_seconds=self.every_seconds,
                initial=initial,
            )
        )
        self._update(initial)

    def _done(self, trainer: Any, epoch: int, batch_idx: int) -> int:
        if self._per_epoch:
            return epoch * self._per_epoch + batch_idx + 1
        return int(trainer.global_step)

    def on_train_epoch_start(self, trainer: Any, pl_module: Any) -> None:
        """Name the epoch that starts on the bar (``epoch e of E``).

        Parameters
        ----------
        trainer : lightning.pytorch.Trainer
            The trainer that fits.
        pl_module : lightning.pytorch.LightningModule
            The task it fits (not read).
        """
        if self._update is not None:
            self._update(self._done(trainer, trainer.current_epoch, -1), description=self._label(trainer.current_epoch))

    def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
        """Count the batch done.

        Parameters
        ----------
        trainer : lightning.pytorch.Trainer
            The trainer that fits.
        pl_module : lightning.pytorch.LightningModule
            The task it fits (not read).
        outputs, batch : Any
            What the step returned and its batch (not read).
        batch_idx : int
            The batch's index within its epoch.
        """
        if self._update is not None:
            self._update(self._done(trainer, trainer.current_epoch, batch_idx))

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        """Close the bar: its ``done`` line.

        Parameters
        ----------
        trainer : lightning.pytorch.Trainer
            The trainer that fits.
        pl_module : lightning.pytorch.LightningModule
            The task it fits (not read).
        """
        self._close()

    def teardown(self, trainer: Any, pl_module: Any, stage: str) -> None:
        """Close the bar if the fit ended without ``on_train_end``.

        Parameters
        ----------
        trainer : lightning.pytorch.Trainer
            The trainer that fits.
        pl_module : lightning.pytorch.LightningModule
            The task it fits (not read).
        stage : str
            The stage that ends (not read).
        """
        self._close()

    def on_exception(self, trainer: Any, pl_module: Any, exception: BaseException) -> None:
        """Close the bar as stopped; turn Lightning's handling of Ctrl-C back into an interrupt.

        Parameters
        ----------
        trainer : lightning.pytorch.Trainer
            The trainer that fits.
        pl_module : lightning.pytorch.LightningModule
            The task it fits (not read).
        exception : BaseException
            What stopped the fit.

        Raises
        ------
        KeyboardInterrupt
            When ``exception`` is one, with the default SIGINT handler restored (Lightning ignores SIGINT
            before its ``sys.exit(1)``).
        """
        self._close(exception)
        if isinstance(exception, KeyboardInterrupt):
            with contextlib.suppress(ValueError):  # not the main thread: nothing to restore
                signal.signal(signal.SIGINT, signal.default_int_handler)
            raise KeyboardInterrupt from None


__all__ = ["TrainingProgress"]
