"""One speech-recognition training step of transformers' WhisperForConditionalGeneration (random init from a config).

    harvest extract examples/zoo/transformers_whisper_train.py

Exercises an audio encoder-decoder: the encoder's two Conv1d layers over log-mel features (extern) with GELU, the
fixed sinusoidal position embeddings added to the frames, pre-norm LayerNorms, SDPA self-attention (bidirectional in
the encoder, causal in the decoder) and cross-attention, GELU feed-forward, the decoder's learned positions and
the tied projection to the vocabulary, the labels shifted into decoder inputs by the model and the cross-entropy,
with the backward; AdamW's update runs eagerly. Nothing is downloaded.
"""

import os

import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main():
    from transformers import WhisperConfig, WhisperForConditionalGeneration

    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda":
        batch, mels, frames, tgt, d_model, layers, heads, vocab = 16, 80, 3000, 64, 384, 4, 6, 8192
    else:
        batch, mels, frames, tgt, d_model, layers, heads, vocab = 2, 16, 32, 8, 32, 1, 2, 256
    config = WhisperConfig(vocab_size=vocab, num_mel_bins=mels, d_model=d_model, encoder_layers=layers,
                           decoder_layers=layers, encoder_attention_heads=heads, decoder_attention_heads=heads,
                           encoder_ffn_dim=2 * d_model, decoder_ffn_dim=2 * d_model, max_source_positions=frames // 2,
                           max_target_positions=4 * tgt, pad_token_id=0, bos_token_id=1, eos_token_id=2,
                           decoder_start_token_id=1, attn_implementation="sdpa")
    model = WhisperForConditionalGeneration(config).to(device).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    features = torch.randn(batch, mels, frames, device=device)
    labels = torch.randint(3, vocab, (batch, tgt), device=device)

    compiled = torch.compile(model)
    loss = compiled(input_features=features, labels=labels).loss
    loss.backward()
    opt.step()

    assert torch.isfinite(loss)
    assert all(torch.isfinite(p).all() for p in model.parameters())
    print(f"transformers Whisper ({layers}+{layers} layers, d_model {d_model}) on {device}: loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
