"""Write a tiny Hugging Face tokenizer into a model-cache layout (`hub/models--org--name/snapshots/<rev>`).

Run with the AIPerf venv's Python (it has `tokenizers` and `transformers`): the benchmark test gives
AIPerf the served model name as tokenizer with HF_HUB_OFFLINE=1 and HF_HOME at this cache, exactly
as the benchmark Job reads the real tokenizer from the model-cache PVC. No network is touched.
Usage: python ops_tokenizer.py HF_HOME MODEL_ID
"""

import sys
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

REVISION = "0000000000000000000000000000000000000000"
WORDS = [
    "the",
    "quick",
    "brown",
    "fox",
    "jumps",
    "over",
    "a",
    "lazy",
    "dog",
    "while",
    "seven",
    "wizards",
    "quietly",
    "judge",
    "boxing",
    "matches",
]


def main(hf_home: str, model_id: str) -> None:
    repo = Path(hf_home) / "hub" / ("models--" + model_id.replace("/", "--"))
    snapshot = repo / "snapshots" / REVISION
    corpus = [" ".join(WORDS[i:] + WORDS[:i]) for i in range(len(WORDS))] * 20
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), special_tokens=["<eos>"]
    )
    tokenizer.train_from_iterator(corpus, trainer)
    PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token="<eos>").save_pretrained(str(snapshot))
    (repo / "refs").mkdir(parents=True, exist_ok=True)
    (repo / "refs" / "main").write_text(REVISION)


if __name__ == "__main__":
    main(*sys.argv[1:])
