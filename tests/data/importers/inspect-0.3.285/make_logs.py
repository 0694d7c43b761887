"""A tiny Inspect task run against Inspect's mock model: tool calls, two samples, two epochs."""
from inspect_ai import Task, task, eval
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput, get_model, ChatMessageAssistant
from inspect_ai.model._model_output import ChatCompletionChoice
from inspect_ai.tool import tool, ToolCall
from inspect_ai.scorer import includes
from inspect_ai.solver import generate, use_tools, system_message

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

from inspect_ai.model import ModelUsage

def outputs():
    for _ in range(8):
        a = ModelOutput.for_tool_call(model="mockllm/model", tool_name="add", tool_arguments={"x": 1, "y": 2})
        a.usage = ModelUsage(input_tokens=20, output_tokens=5, total_tokens=25)
        yield a
        b = ModelOutput.from_content(model="mockllm/model", content="The answer is 3.")
        b.usage = ModelUsage(input_tokens=30, output_tokens=6, total_tokens=36)
        yield b

@task
def adder():
    return Task(
        dataset=[Sample(input="What is 1 + 2?", target="3", id="s1"), Sample(input="Add 1 and 2.", target="3", id="s2")],
        solver=[system_message("You add numbers."), use_tools(add()), generate()],
        scorer=includes(),
        epochs=2,
    )

if __name__ == "__main__":
    import sys
    fmt = sys.argv[1]
    model = get_model("mockllm/model", custom_outputs=outputs())
    eval(adder(), model=model, log_format=fmt, log_dir=f"logs-{fmt}", display="none")
