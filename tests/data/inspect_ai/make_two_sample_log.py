"""Write ``two-samples.eval``: one Inspect log of two samples that differ in their calls.

Both samples ask the same question; Inspect's own mock model (``mockllm/model``, no
network) answers the first by calling ``add(x=1, y=2)`` and the second by calling
``add(x=2, y=1)``, then each says "The answer is 3.". So the two runs of the log start
with the same request, get different answers (the tool call's arguments), make the tool
call with other arguments, and end the same way — what ``compare LOG LOG --run-a s1_epoch_1
--run-b s2_epoch_1`` shows in tests/inspector/test_compare.py.

Written by inspect-ai 0.3.285 (Python 3, in a throwaway venv — inspect-ai is not a
dependency of this project):

    python3 -m venv /tmp/ivenv && /tmp/ivenv/bin/pip install inspect-ai
    /tmp/ivenv/bin/python tests/data/inspect_ai/make_two_sample_log.py

The samples run one at a time (``max_samples=1``), so the mock model's answers are used
in sample order.
"""

import shutil
import sys
import tempfile
from pathlib import Path

from inspect_ai import Task, eval, task
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import includes
from inspect_ai.solver import generate, system_message, use_tools
from inspect_ai.tool import tool

OUT = Path(__file__).resolve().parent / "two-samples.eval"


@tool
def add():
    async def execute(x: int, y: int):
        """Add two numbers.

        Args:
            x: first number
            y: second number
        """
        return x + y

    return execute


def outputs():
    """The mock model's answers, in order: sample s1's two calls, then sample s2's."""
    for x, y in ((1, 2), (2, 1)):
        call = ModelOutput.for_tool_call(model="mockllm/model", tool_name="add", tool_arguments={"x": x, "y": y})
        call.usage = ModelUsage(input_tokens=20, output_tokens=5, total_tokens=25)
        yield call
        answer = ModelOutput.from_content(model="mockllm/model", content="The answer is 3.")
        answer.usage = ModelUsage(input_tokens=30, output_tokens=6, total_tokens=36)
        yield answer


@task
def two_samples():
    return Task(
        dataset=[
            Sample(input="What is 1 + 2?", target="3", id="s1"),
            Sample(input="What is 1 + 2?", target="3", id="s2"),
        ],
        solver=[system_message("You add numbers with the add tool."), use_tools(add()), generate()],
        scorer=includes(),
    )


if __name__ == "__main__":
    model = get_model("mockllm/model", custom_outputs=outputs())
    with tempfile.TemporaryDirectory() as logs:
        [log] = eval(two_samples(), model=model, log_format="eval", log_dir=logs, display="none", max_samples=1)
        if log.status != "success":
            sys.exit(f"the eval ended {log.status}: {log.error}")
        shutil.copyfile(log.location, OUT)
    print(f"wrote {OUT} ({OUT.stat().st_size:,} bytes)")
