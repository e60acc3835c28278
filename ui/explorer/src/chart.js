// The chart library, loaded on first use: only the pieces bar and line
// charts need are registered (tree-shaken), not all of Chart.js.
import {
  BarController, BarElement, CategoryScale, Chart, Legend, LineController, LineElement,
  LinearScale, PointElement, Tooltip,
} from 'chart.js';

Chart.register(BarController, LineController, BarElement, LineElement, PointElement,
  CategoryScale, LinearScale, Legend, Tooltip);

export { Chart };
