"""The lessons' experiments: the measurements behind their claims, one module per thing measured.

    module             lesson   what it measures
    recurrent.py       1, 3     how much an RNN's last state still depends on the first token
                                (recurrent_memory); a GRU seq2seq with and without attention,
                                accuracy per input length (rnn_bottleneck)
    projection.py      5        the spread of q . k from nn.Linear projections, with and without
                                / sqrt(d_k) (projection_variance)
    norm_placement.py  10       gradient norms per layer of post-LN and pre-LN stacks, with and
                                without warmup (norm_placement)
    induction.py       12, 17   the decoder's induction scores on repeated random tokens
                                (induction_scores)
    loss.py            12       the decoder's loss with heads silenced or the mask changed
                                (text_loss)
    chat.py            12       the decoder's answer to a question, and where it looked
                                (chat_answer)
    sampling.py        12       temperature and top-k: entropy and spread of continuations
                                (sample_continuations)
    sinks.py           12, 15   the first token's share of attention by query distance
                                (first_token_by_distance)
    windows.py         15       perplexity under a sliding window, with and without sink tokens
                                or the wrong RoPE layout (window_run, window_experiment)
    decoding.py        14       tokens per second with and without the key/value cache
                                (measure_decoding)

Each is a pure function: frozen params (or a model and ids) in, a frozen result out, every draw
seeded. A lesson imports from the module, e.g. `from attention.experiments.loss import
text_loss`. The explorers' functions are in attention/explore (one module per explorer); both
packages sit on the same import layer and do not import each other. The pretrained models come
from attention.models.cache (loaded once per kernel).
"""
