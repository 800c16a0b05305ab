package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// The generator writes note i from an RNG seeded by (seed, i) alone, so a
// vault is the same whatever the number of workers, and a link to note j
// can name j's title without having generated j.

// english is the head of the vocabulary, most frequent first; the Zipf tail
// continues with made-up words built from syllables (realistic for BM25:
// a long tail of rare terms).
var english = strings.Fields(`the of and to in is for that with on as this it be are by from or at
note notes project meeting idea task review plan design team system data research book reading
week daily goal habit health sleep work learning language code python go rust database query search
index link graph garden vault markdown template tag folder archive inbox journal summary question
answer problem solution process workflow tool app product customer market strategy budget finance
invest money travel trip city food recipe coffee music film article paper author theory model
experiment result analysis chart metric growth history culture science physics biology chemistry
math statistics algorithm network server client api release version bug feature test deploy cloud
security privacy design pattern architecture interface library framework performance memory cache
latency throughput storage backup sync mobile desktop browser editor plugin theme keyboard shortcut
writing essay draft outline chapter quote highlight concept principle mental framework decision
priority focus energy morning evening weekend family friend conversation interview hiring career
manager leadership feedback retrospective roadmap milestone deadline estimate risk dependency
contract invoice payment tax insurance doctor exercise running yoga garden plant weather
philosophy psychology economics politics education school course lecture exam homework thesis`)

var german = strings.Fields(`der die das und ist nicht mit für auf ein eine zu von im den dem
Besprechung Projekt Aufgabe Notiz Zusammenfassung Idee Ziel Woche Arbeit Forschung Buch Lesen
Gesundheit Schlaf Sprache Datenbank Suche Verknüpfung Garten Vorlage Ordner Archiv Tagebuch Frage
Antwort Problem Lösung Werkzeug Kunde Markt Strategie Haushalt Geld Reise Stadt Essen Rezept Kaffee
Musik Geschichte Wissenschaft Mathematik Straßenbahn Fahrradweg Übersetzung Rückmeldung Entscheidung`)

var chinese = strings.Fields(`会议 项目 任务 笔记 想法 计划 设计 团队 系统 数据 研究 阅读 学习 语言 代码 数据库
搜索 索引 链接 图谱 花园 模板 标签 文件夹 归档 日记 总结 问题 答案 方案 流程 工具 客户 市场 策略 预算
投资 旅行 城市 美食 咖啡 音乐 电影 文章 论文 理论 模型 实验 结果 分析 历史 文化 科学 物理 数学 健康`)

var japanese = strings.Fields(`会議 プロジェクト タスク メモ アイデア 計画 設計 チーム システム データ 研究 読書
学習 言語 コード データベース 検索 索引 リンク グラフ 庭 テンプレート タグ フォルダ アーカイブ 日記 要約
質問 回答 問題 解決 ツール 顧客 市場 戦略 予算 旅行 東京 料理 コーヒー 音楽 映画 記事 論文 理論 実験 結果`)

var syllables = strings.Fields(`ka lo mi ra ten vor bel sun dar ix po lu gre fen tal mor kin sa ber quo
vel an dro cy mat ris ol ex pen tor lin ga ve ho nu ster ple zan`)

var areas = []string{"Projects", "Areas", "Resources", "Archive", "Journal", "Work", "Personal", "Research", "Reading", "Inbox", "Teams", "Clients"}

const tailWords = 30000

// vocab is the English head followed by the made-up tail.
var vocab = func() []string {
	out := append([]string(nil), english...)
	seen := map[string]bool{}
	for _, w := range out {
		seen[w] = true
	}
	r := rand.New(rand.NewPCG(42, 42))
	for len(out) < len(english)+tailWords {
		n := 2 + r.IntN(3)
		var b strings.Builder
		for k := 0; k < n; k++ {
			b.WriteString(syllables[r.IntN(len(syllables))])
		}
		if w := b.String(); !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}()

// noteRand is note i's own RNG (stream distinguishes independent uses).
func noteRand(seed int64, i, stream int) *rand.Rand {
	x := uint64(seed)*0x9E3779B97F4A7C15 ^ uint64(i)*0xBF58476D1CE4E5B9 ^ uint64(stream)*0x94D049BB133111EB
	x ^= x >> 31
	return rand.New(rand.NewPCG(x, uint64(seed)))
}

var (
	cdfMu sync.Mutex
	cdfs  = map[int][]float64{}
)

// zipf draws an index in [0,n) with P(k) ∝ 1/(k+2)^1.07 (a Zipf-like law).
func zipf(r *rand.Rand, n int) int {
	cdfMu.Lock()
	c := cdfs[n]
	if c == nil {
		c = make([]float64, n)
		sum := 0.0
		for k := range c {
			sum += 1 / math.Pow(float64(k+2), 1.07)
			c[k] = sum
		}
		for k := range c {
			c[k] /= sum
		}
		cdfs[n] = c
	}
	cdfMu.Unlock()
	u := r.Float64()
	return min(sort.SearchFloat64s(c, u), n-1)
}

// gen holds what every note needs: seed, size, language of each note.
type gen struct {
	seed int64
	n    int
}

func (g *gen) lang(i int) string {
	switch v := noteRand(g.seed, i, 1).IntN(100); {
	case v < 85:
		return "en"
	case v < 90:
		return "de"
	case v < 95:
		return "zh"
	default:
		return "ja"
	}
}

func (g *gen) word(r *rand.Rand, lang string) string {
	switch lang {
	case "de":
		if r.IntN(3) == 0 {
			return vocab[zipf(r, len(vocab))]
		}
		return german[zipf(r, len(german))]
	case "zh":
		return chinese[zipf(r, len(chinese))]
	case "ja":
		return japanese[zipf(r, len(japanese))]
	}
	return vocab[zipf(r, len(vocab))]
}

// title is note i's title (also its file name); unique by its suffix.
func (g *gen) title(i int) string {
	r := noteRand(g.seed, i, 2)
	lang := g.lang(i)
	k := 2 + r.IntN(3)
	parts := make([]string, 0, k+1)
	for j := 0; j < k; j++ {
		w := g.word(r, lang)
		if lang == "en" && j == 0 {
			w = strings.ToUpper(w[:1]) + w[1:]
		}
		parts = append(parts, w)
	}
	sep := " "
	if lang == "zh" || lang == "ja" {
		sep = ""
	}
	return strings.Join(parts, sep) + fmt.Sprintf(" %d", i)
}

// folder is note i's folder: area / topic / year [/ sub], 1 to 4 deep.
func (g *gen) folder(i int) string {
	r := noteRand(g.seed, i, 3)
	parts := []string{areas[zipf(r, len(areas))]}
	depth := 1 + r.IntN(4)
	if depth >= 2 {
		parts = append(parts, strings.Title(vocab[20+zipf(r, 400)]))
	}
	if depth >= 3 {
		parts = append(parts, fmt.Sprint(2015+r.IntN(12)))
	}
	if depth >= 4 {
		parts = append(parts, fmt.Sprintf("%02d", 1+r.IntN(12)))
	}
	return filepath.Join(parts...)
}

// target is a link target with a power-law in-degree (low ids are hubs).
func (g *gen) target(r *rand.Rand) int {
	u := r.Float64()
	return int(math.Pow(u, 3) * float64(g.n))
}

func (g *gen) sentence(r *rand.Rand, lang string) string {
	k := 6 + r.IntN(14)
	var b strings.Builder
	for j := 0; j < k; j++ {
		w := g.word(r, lang)
		switch lang {
		case "zh", "ja":
			b.WriteString(w)
			if j%5 == 4 && j != k-1 {
				b.WriteString("，")
			}
			continue
		}
		if j == 0 {
			w = strings.ToUpper(w[:1]) + w[1:]
		} else {
			b.WriteByte(' ')
		}
		b.WriteString(w)
	}
	if lang == "zh" || lang == "ja" {
		b.WriteString("。")
	} else {
		b.WriteString(".")
	}
	return b.String()
}

// note renders note i.
func (g *gen) note(i int) []byte {
	r := noteRand(g.seed, i, 4)
	lang := g.lang(i)
	var b strings.Builder
	tags := 1 + r.IntN(4)
	// Frontmatter on 80% of the notes.
	if r.IntN(10) < 8 {
		b.WriteString("---\n")
		b.WriteString("tags:\n")
		for t := 0; t < tags; t++ {
			fmt.Fprintf(&b, "  - %s\n", vocab[20+zipf(r, 300)])
		}
		fmt.Fprintf(&b, "status: %s\n", []string{"draft", "active", "done", "archived"}[zipf(r, 4)])
		fmt.Fprintf(&b, "created: %04d-%02d-%02d\n", 2015+r.IntN(12), 1+r.IntN(12), 1+r.IntN(28))
		if r.IntN(4) == 0 {
			fmt.Fprintf(&b, "aliases: [%s %d]\n", g.word(r, lang), i)
		}
		if r.IntN(3) == 0 {
			fmt.Fprintf(&b, "rating: %d\n", 1+r.IntN(5))
		}
		b.WriteString("---\n")
	}
	fmt.Fprintf(&b, "# %s\n\n", g.title(i))
	sections := 1 + zipf(r, 8)
	for s := 0; s < sections; s++ {
		if s > 0 {
			level := 2 + r.IntN(2)
			fmt.Fprintf(&b, "%s %s %s\n\n", strings.Repeat("#", level), g.word(r, lang), g.word(r, lang))
		}
		paras := 1 + r.IntN(3)
		for p := 0; p < paras; p++ {
			sents := 1 + r.IntN(5)
			for k := 0; k < sents; k++ {
				if k > 0 && lang != "zh" && lang != "ja" {
					b.WriteByte(' ')
				}
				b.WriteString(g.sentence(r, lang))
				// Links: ~0.4 per sentence, to power-law targets.
				if r.IntN(5) < 2 {
					t := g.target(r)
					if r.IntN(6) == 0 {
						fmt.Fprintf(&b, " See [[%s|%s]].", g.title(t), g.word(r, lang))
					} else {
						fmt.Fprintf(&b, " [[%s]]", g.title(t))
					}
				}
				if r.IntN(12) == 0 {
					fmt.Fprintf(&b, " #%s", vocab[20+zipf(r, 300)])
				}
			}
			b.WriteString("\n\n")
		}
		if r.IntN(4) == 0 {
			tasks := 1 + r.IntN(4)
			for t := 0; t < tasks; t++ {
				box := " "
				if r.IntN(3) == 0 {
					box = "x"
				}
				fmt.Fprintf(&b, "- [%s] %s %s", box, g.word(r, lang), g.word(r, lang))
				if r.IntN(3) == 0 {
					fmt.Fprintf(&b, " 📅 %04d-%02d-%02d", 2024+r.IntN(3), 1+r.IntN(12), 1+r.IntN(28))
				}
				b.WriteByte('\n')
			}
			b.WriteByte('\n')
		}
		if r.IntN(8) == 0 {
			b.WriteString("- " + g.sentence(r, lang) + "\n- " + g.sentence(r, lang) + "\n\n")
		}
	}
	return []byte(b.String())
}

// generate writes notes 0..n-1 under out; returns the bytes written.
func generate(out string, n int, seed int64) (int64, error) {
	g := &gen{seed: seed, n: n}
	var total atomic.Int64
	var firstErr error
	var mu sync.Mutex
	var next atomic.Int64
	var wg sync.WaitGroup
	made := sync.Map{}
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				dir := filepath.Join(out, g.folder(i))
				if _, ok := made.Load(dir); !ok {
					if err := os.MkdirAll(dir, 0o755); err != nil {
						mu.Lock()
						firstErr = err
						mu.Unlock()
						return
					}
					made.Store(dir, true)
				}
				body := g.note(i)
				if err := os.WriteFile(filepath.Join(dir, g.title(i)+".md"), body, 0o644); err != nil {
					mu.Lock()
					firstErr = err
					mu.Unlock()
					return
				}
				total.Add(int64(len(body)))
			}
		}()
	}
	wg.Wait()
	return total.Load(), firstErr
}
