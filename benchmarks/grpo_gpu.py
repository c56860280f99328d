"""GRPO on a GPU: rollout tokens/s (batched generation, bf16) and update time, on a real small model.

Measures, for one policy on one GPU:
- generation: batched sampling of ``--batch`` replies of ``--new-tokens`` tokens after a ``--prompt-tokens``
  prompt, through :class:`frog_gym.agents.hf.HFPolicy` (the learner's own rollout path), in tokens/s;
- update: one GRPO optimizer step (:func:`frog_gym.learners.grpo.policy_loss` over the same trajectories,
  micro-batched), in seconds, with the peak GPU memory;
- the ratio of batched to one-at-a-time generation (the baseline run alongside, as benchmarks here do).

Needs the ``torch`` extra and a model folder on disk (no hub is assumed reachable): any causal LM saved
with ``save_pretrained``, e.g. Qwen2.5-0.5B-Instruct. Without a GPU, or without ``--model``, it says so
and exits 0; ``--tiny`` builds a small random GPT-2 from a config instead of loading one, so the script
itself can be checked anywhere.

Run it:
    python benchmarks/grpo_gpu.py --model /models/Qwen2.5-0.5B-Instruct --batch 64 --new-tokens 256
    python benchmarks/grpo_gpu.py --tiny            # a 12-layer GPT-2 built from a config
It prints one JSON line of results.
"""

from __future__ import annotations

import argparse
import json
import sys
import time


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", help="a save_pretrained folder of a causal LM")
    p.add_argument("--tiny", action="store_true", help="build a random GPT-2 (12 layers, 768 wide) instead")
    p.add_argument("--batch", type=int, default=64, help="replies sampled at once (default 64)")
    p.add_argument("--prompt-tokens", type=int, default=512, help="prompt length (default 512)")
    p.add_argument("--new-tokens", type=int, default=256, help="tokens per reply (default 256)")
    p.add_argument("--micro-batch", type=int, default=8, help="trajectories per forward in the update (default 8)")
    p.add_argument("--dtype", default="bfloat16", help="bfloat16 (default), float16 or float32")
    args = p.parse_args(argv)

    try:
        import torch
    except ImportError:
        print(json.dumps({"skipped": "torch is not installed: pip install 'frog-gym[torch]'"}))
        return 0
    if not torch.cuda.is_available():
        print(json.dumps({"skipped": "no CUDA GPU is available"}))
        return 0
    if not args.model and not args.tiny:
        print(json.dumps({"skipped": "give --model PATH (a save_pretrained folder) or --tiny"}))
        return 0

    from frog_gym.learners.grpo import pad_right, policy_loss, sampler_logprobs, token_logprobs
    from transformers import AutoModelForCausalLM, AutoTokenizer, GPT2Config, GPT2LMHeadModel

    from frog_gym.agents.hf import HFPolicy, Sampling, Trajectory

    dtype = getattr(torch, args.dtype)
    if args.tiny:
        from frog_gym.learners.toy import train_tokenizer

        tokenizer = train_tokenizer([f"token {i} of a benchmark corpus" for i in range(2000)], 4000)
        config = GPT2Config(vocab_size=len(tokenizer), n_positions=args.prompt_tokens + args.new_tokens + 8,
                            n_layer=12, n_embd=768, n_head=12, eos_token_id=tokenizer.eos_token_id,
                            pad_token_id=tokenizer.pad_token_id)
        model = GPT2LMHeadModel(config).to("cuda", dtype)
        name = "gpt2-12x768-random"
    else:
        tokenizer = AutoTokenizer.from_pretrained(args.model)
        model = AutoModelForCausalLM.from_pretrained(args.model, dtype=dtype).to("cuda")
        name = args.model
    model.eval()
    policy = HFPolicy(model, tokenizer, Sampling(temperature=1.0, max_new_tokens=args.new_tokens))
    vocab = min(len(tokenizer), model.get_input_embeddings().num_embeddings)
    eos = tokenizer.eos_token_id
    torch.manual_seed(0)

    def prompts(n: int) -> list[Trajectory]:
        out = []
        for _ in range(n):
            t = Trajectory()
            ids = torch.randint(0, vocab, (args.prompt_tokens,)).tolist()
            t.add_context([i if i != eos else (i + 1) % vocab for i in ids])
            out.append(t)
        return out

    def timed_generate(n: int) -> tuple[float, int]:
        batch = prompts(n)
        torch.cuda.synchronize()
        start = time.perf_counter()
        with torch.no_grad():
            policy.generate(batch)
        torch.cuda.synchronize()
        return time.perf_counter() - start, sum(len(t.generated()[-1]) for t in batch)

    timed_generate(2)  # warm-up: kernels, allocator
    batched_s, batched_tokens = timed_generate(args.batch)
    single_s, single_tokens = timed_generate(1)
    batch = prompts(args.batch)
    with torch.no_grad():
        policy.generate(batch)
    model.train()
    optimizer = torch.optim.AdamW([q for q in model.parameters() if q.requires_grad], lr=1e-6)
    torch.cuda.reset_peak_memory_stats()
    torch.cuda.synchronize()
    start = time.perf_counter()
    n_tokens = float(sum(sum(t.mask) for t in batch))
    advantages = torch.linspace(-1, 1, len(batch))
    optimizer.zero_grad(set_to_none=True)
    for i in range(0, len(batch), args.micro_batch):
        part = batch[i:i + args.micro_batch]
        ids, att, mask = (x.cuda() for x in pad_right(part, policy.tokenizer.pad_token_id))
        logp, _ = token_logprobs(model, ids, att)
        old = sampler_logprobs(part, logp.shape[1]).cuda()  # as the learner does: recorded at sampling
        loss, _ = policy_loss(logp, old, advantages[i:i + len(part)].cuda(), mask[:, 1:], num_tokens=n_tokens)
        loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    torch.cuda.synchronize()
    update_s = time.perf_counter() - start
    result = {
        "model": name, "gpu": torch.cuda.get_device_name(0), "dtype": args.dtype, "batch": args.batch,
        "prompt_tokens": args.prompt_tokens, "new_tokens": args.new_tokens,
        "rollout_tokens_per_s": round(batched_tokens / batched_s, 1),
        "single_tokens_per_s": round(single_tokens / single_s, 1),
        "batched_over_single": round((batched_tokens / batched_s) / (single_tokens / single_s), 2),
        "mean_reply_tokens": round(batched_tokens / args.batch, 1), "update_s": round(update_s, 3), "update_tokens": int(n_tokens),
        "peak_memory_gib": round(torch.cuda.max_memory_allocated() / 2**30, 2),
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
