"""The toy encoder-decoder: a tiny Transformer from the core, trained on the CPU in under a minute.

Read in this order:
    data         reverse or sort a short string of symbols; tokenizer, batches, the held-out split
    training     teacher forcing, the loss over real positions, a seeded interruptible Trainer
    decoding     free running (greedy decoding with a key/value cache) and exposure bias
    snapshots    the model's attention maps at chosen training steps, for the widgets
    checkpoints  save and load a trained model; `load_reverse_model()` loads the shipped one
"""
