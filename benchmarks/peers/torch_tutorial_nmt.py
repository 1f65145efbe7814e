"""Peer of figure 3 on torch: RNNsearch as PyTorch's tutorial writes it.

In the style of PyTorch's "NLP From Scratch: Translation with a Sequence
to Sequence Network and Attention" tutorial: `EncoderRNN` (embedding +
`nn.GRU`), `BahdanauAttention` (`Wa`, `Ua`, `Va` linears), and an
`AttnDecoderRNN` stepped by an eager Python loop with teacher forcing.
Sized and wired like `kerattn.zoo.bahdanau_nmt` (bidirectional encoder,
tanh initial state, keys projected once, deep output with maxout), so the
figure compares implementations, not models.
"""

import torch
from torch import nn


class EncoderRNN(nn.Module):
    def __init__(self, vocab_size, embedding_dim, units):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embedding_dim)
        self.gru = nn.GRU(embedding_dim, units, batch_first=True,
                          bidirectional=True)

    def forward(self, source_ids):
        outputs, hidden = self.gru(self.embedding(source_ids))
        return outputs, hidden[1]            # annotations, <-h_1


class BahdanauAttention(nn.Module):
    def __init__(self, units, key_dim, alignment_units):
        super().__init__()
        self.Wa = nn.Linear(units, alignment_units, bias=False)
        self.Ua = nn.Linear(key_dim, alignment_units, bias=False)
        self.Va = nn.Linear(alignment_units, 1, bias=False)

    def forward(self, query, keys, values, mask):
        scores = self.Va(torch.tanh(self.Wa(query).unsqueeze(1) + keys))
        scores = scores.squeeze(2).masked_fill(~mask, -1e9)
        weights = torch.softmax(scores, dim=-1)
        return torch.bmm(weights.unsqueeze(1), values).squeeze(1), weights


class AttnDecoderRNN(nn.Module):
    def __init__(self, vocab_size, embedding_dim, units, alignment_units,
                 maxout_units):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embedding_dim)
        self.attention = BahdanauAttention(units, 2 * units, alignment_units)
        self.gru = nn.GRUCell(embedding_dim + 2 * units, units)
        self.deep_output = nn.Linear(units + 2 * units + embedding_dim,
                                     2 * maxout_units)
        self.out = nn.Linear(maxout_units, vocab_size)

    def forward(self, annotations, s, target_in_ids, mask):
        keys = self.attention.Ua(annotations)           # once per sentence
        logits = []
        y = self.embedding(target_in_ids)
        for i in range(target_in_ids.shape[1]):
            c, _ = self.attention(s, keys, annotations, mask)
            t = self.deep_output(torch.cat([s, c, y[:, i]], dim=-1))
            t = t.view(t.shape[0], -1, 2).max(dim=-1).values
            logits.append(self.out(t))
            s = self.gru(torch.cat([y[:, i], c], dim=-1), s)
        return torch.stack(logits, dim=1)


class TutorialNMT(nn.Module):
    def __init__(self, vocab_size, embedding_dim, units, alignment_units,
                 maxout_units):
        super().__init__()
        self.encoder = EncoderRNN(vocab_size, embedding_dim, units)
        self.initial_state = nn.Linear(units, units)
        self.decoder = AttnDecoderRNN(vocab_size, embedding_dim, units,
                                      alignment_units, maxout_units)

    def forward(self, source_ids, target_in_ids):
        annotations, backward_last = self.encoder(source_ids)
        s = torch.tanh(self.initial_state(backward_last))
        return self.decoder(annotations, s, target_in_ids, source_ids != 0)


def train_step_fn(model):
    """One Adam step on cross-entropy, as the tutorial's `train_epoch`."""
    optimizer = torch.optim.Adam(model.parameters())
    loss_fn = nn.CrossEntropyLoss()

    def step(source_ids, target_in_ids, target_out_ids):
        optimizer.zero_grad(set_to_none=True)
        logits = model(source_ids, target_in_ids)
        loss = loss_fn(logits.reshape(-1, logits.shape[-1]),
                       target_out_ids.reshape(-1))
        loss.backward()
        optimizer.step()
        return loss.detach()

    return step
